//! A test bench for [`CuratorMutex`] (and the foreground calls it makes): feeds it inputs one
//! at a time and reads the commands of the last step, for the table tests of
//! [`super::foreground`] and [`super::interprocess_mutex`].

use std::collections::BTreeMap;

use super::interprocess_mutex::CuratorMutex;
use super::Release;
use crate::error::ZkError;
use crate::event::{EventType, SessionEvent, WatchedEvent};
use crate::lock::{LockReport, LockRequest};
use crate::machine::{Command, Input};
use crate::request::{Request, Response};
use crate::types::{Created, SessionId, Stat};

/// The lock's directory: two levels, so that `mkdirs` has two ancestors to make.
pub const DIR: &str = "/locks/l";

/// A mutex under test: the commands of its last step, and helpers to answer them.
pub struct Bench {
    pub mutex: CuratorMutex,
    pub out: Vec<Command<LockReport>>,
    /// Operations sent and not answered yet, by id.
    outstanding: BTreeMap<u64, Request>,
    /// Timers armed and not fired yet, in the order armed.
    armed: Vec<(u64, u64)>,
}

impl Bench {
    /// A mutex of `release` for host `u`, not connected yet.
    pub fn unconnected(release: Release) -> Bench {
        Bench {
            mutex: CuratorMutex::new(release, DIR, "u"),
            out: Vec::new(),
            outstanding: BTreeMap::new(),
            armed: Vec::new(),
        }
    }

    /// A mutex of `release`, connected in session 1.
    pub fn connected(release: Release) -> Bench {
        let mut bench = Bench::unconnected(release);
        bench.session(SessionEvent::Connected {
            session_id: SessionId(1),
        });
        bench
    }

    /// Connected, and an acquire (with `timeout_ms`) asked for: its create is out.
    pub fn acquiring(release: Release, timeout_ms: Option<u64>) -> Bench {
        let mut bench = Bench::connected(release);
        bench.input(Input::Request(LockRequest::Acquire { timeout_ms }));
        assert!(
            bench.has("create /locks/l/_c_u-1-lock-"),
            "{:?}",
            bench.ops()
        );
        bench
    }

    /// Acquiring, node 5 made, and the listing out.
    pub fn listing(release: Release, timeout_ms: Option<u64>) -> Bench {
        let mut bench = Bench::acquiring(release, timeout_ms);
        bench.created(5);
        assert!(bench.has("getChildren /locks/l"), "{:?}", bench.ops());
        bench
    }

    /// Listed behind node 3 (host `v`), its `getData` answered: the thread waits.
    pub fn waiting(release: Release, timeout_ms: Option<u64>) -> Bench {
        let mut bench = Bench::listing(release, timeout_ms);
        bench.listed(&[(3, "v-1"), (5, "u-1")]);
        bench.predecessor_read("/locks/l/_c_v-1-lock-0000000003");
        assert!(bench.ops().is_empty(), "waits: {:?}", bench.ops());
        bench
    }

    /// Holding the lock with token 105 (node 5, first in line).
    pub fn holding(release: Release) -> Bench {
        let mut bench = Bench::listing(release, None);
        bench.listed(&[(5, "u-1")]);
        bench.token_read(105);
        assert_eq!(
            bench.reports(),
            [LockReport::Acquired {
                token: 105,
                holds: 1
            }]
        );
        bench
    }

    pub fn input(&mut self, input: Input<LockRequest>) {
        match &input {
            Input::Reply { id, .. } => {
                self.outstanding.remove(id);
            }
            Input::Timer(id) => self.armed.retain(|(armed, _)| armed != id),
            _ => {}
        }
        self.out.clear();
        self.mutex.handle(input, &mut self.out);
        for command in &self.out {
            match command {
                Command::Op { id, request } => {
                    self.outstanding.insert(*id, request.clone());
                }
                Command::Timer { id, after_ms } => self.armed.push((*id, *after_ms)),
                _ => {}
            }
        }
    }

    pub fn request(&mut self, request: LockRequest) {
        self.input(Input::Request(request));
    }

    /// A session event, and the framework's listener turns (its 0 ms notice timers).
    pub fn session(&mut self, event: SessionEvent) {
        self.input(Input::Session(event));
        let mut seen = Vec::new();
        while let Some(id) = self.timer_of(0) {
            seen.append(&mut self.out);
            self.input(Input::Timer(id));
        }
        seen.append(&mut self.out);
        self.out = seen;
    }

    /// The id of a timer of `after_ms` armed in the last step.
    pub fn timer_of(&self, after_ms: u64) -> Option<u64> {
        self.out.iter().find_map(|c| match c {
            Command::Timer { id, after_ms: a } if *a == after_ms => Some(*id),
            _ => None,
        })
    }

    /// The timers armed in the last step, as their delays.
    pub fn timers(&self) -> Vec<u64> {
        (self.out.iter())
            .filter_map(|c| match c {
                Command::Timer { after_ms, .. } => Some(*after_ms),
                _ => None,
            })
            .collect()
    }

    /// Fires the timer of `after_ms` armed last and not fired yet.
    pub fn fire(&mut self, after_ms: u64) {
        let (id, _) = *(self.armed.iter().rev())
            .find(|(_, a)| *a == after_ms)
            .unwrap_or_else(|| panic!("a {after_ms} ms timer among {:?}", self.armed));
        self.input(Input::Timer(id));
    }

    /// The operations of the last step, in order.
    pub fn ops(&self) -> Vec<(u64, Request)> {
        (self.out.iter())
            .filter_map(|c| match c {
                Command::Op { id, request } => Some((*id, request.clone())),
                _ => None,
            })
            .collect()
    }

    /// The one outstanding operation whose description starts with `want`.
    pub fn op(&self, want: &str) -> u64 {
        let found: Vec<u64> = (self.outstanding.iter())
            .filter(|(_, r)| describe(r).starts_with(want))
            .map(|(id, _)| *id)
            .collect();
        assert_eq!(found.len(), 1, "one {want:?} among {:?}", self.outstanding);
        found[0]
    }

    pub fn has(&self, want: &str) -> bool {
        self.ops()
            .iter()
            .any(|(_, r)| describe(r).starts_with(want))
    }

    pub fn reply(&mut self, want: &str, result: Result<Response, ZkError>) {
        let id = self.op(want);
        self.input(Input::Reply { id, result });
    }

    pub fn reports(&self) -> Vec<LockReport> {
        (self.out.iter())
            .filter_map(|c| match c {
                Command::Report(r) => Some(r.clone()),
                _ => None,
            })
            .collect()
    }

    /// Answers the protected create with node `seq`.
    pub fn created(&mut self, seq: u32) {
        let id = self.op("create /locks/l/_c_");
        let request = self.outstanding[&id].clone();
        let Request::Create { path, .. } = request else {
            unreachable!("a create")
        };
        let path = format!("{path}{seq:010}");
        let stat = stat(100 + i64::from(seq));
        self.input(Input::Reply {
            id,
            result: Ok(Response::Created(Created { path, stat })),
        });
    }

    /// Answers the listing with `children`, by sequence number and protection (`u-1`: this
    /// host's first create).
    pub fn listed(&mut self, children: &[(u32, &str)]) {
        let names = (children.iter())
            .map(|(seq, who)| format!("_c_{who}-lock-{seq:010}"))
            .collect();
        self.reply(
            "getChildren /locks/l",
            Ok(Response::Children(names, Stat::default())),
        );
    }

    /// Answers the watched `getData` of `path`.
    pub fn predecessor_read(&mut self, path: &str) {
        self.reply(
            &format!("getData {path} watch=true"),
            Ok(Response::Data(Vec::new(), stat(103))),
        );
    }

    /// Answers the application's read of its node with `czxid`.
    pub fn token_read(&mut self, czxid: i64) {
        self.reply(
            "exists /locks/l/_c_u-",
            Ok(Response::Exists(Some(stat(czxid)))),
        );
    }

    /// Answers the operation `want` with `ConnectionLoss`, then each retry `times - 1` more
    /// times, firing the sleeps between; returns the sleeps taken.
    pub fn lose(&mut self, want: &str, times: usize) -> Vec<u64> {
        let mut sleeps = Vec::new();
        for n in 0..times {
            self.reply(want, Err(ZkError::ConnectionLoss));
            if n + 1 < times {
                let sleep = *self.timers().last().expect("a retry sleeps");
                sleeps.push(sleep);
                self.fire(sleep);
            }
        }
        sleeps
    }

    /// The deletion of `path`, as its watch delivers it.
    pub fn deleted(&mut self, path: &str) {
        self.input(Input::Watch(WatchedEvent {
            event_type: EventType::NodeDeleted,
            path: path.to_owned(),
            zxid: WatchedEvent::NO_ZXID,
        }));
    }
}

pub fn stat(czxid: i64) -> Stat {
    Stat {
        czxid,
        ephemeral_owner: 1,
        ..Stat::default()
    }
}

/// A request as a short name of its kind and path (and a read's watch), to match on.
pub fn describe(request: &Request) -> String {
    match request {
        Request::Create { path, .. } => format!("create {path}"),
        Request::Delete { path, .. } => format!("delete {path}"),
        Request::Exists { path, .. } => format!("exists {path}"),
        Request::GetData { path, watch } => format!("getData {path} watch={watch}"),
        Request::GetChildren { path, .. } => format!("getChildren {path}"),
        Request::SetData { path, .. } => format!("setData {path}"),
        Request::Sync { path } => format!("sync {path}"),
        Request::Multi(_) => "multi".to_owned(),
    }
}
