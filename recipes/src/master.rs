//! The classic master election of the ZooKeeper book (`runForMaster`), as a state machine.
//!
//! # The algorithm
//!
//! - **runForMaster**: create the ephemeral node `/master` with this server's id as data.
//!   - OK: this process is the master.
//!   - `NodeExists`: another is master; become a backup (below).
//!   - `ConnectionLoss`: the create may have been applied, so **checkMaster**: read `/master`;
//!     if its data is our id, we are master; if it is another's, we are a backup; if the node is
//!     missing, run for master again.
//! - **backup**: `exists("/master", watch)`; when the node is deleted, run for master again (if
//!   it is already gone, at once).
//! - `SessionExpired`: stop. The session, and with it any mastership, is gone for good.
//! - Any other error (`NoNode` when the parent was wiped, for one): the book's `default:`
//!   branches. A create or a check that fails so only logs the error, and the process waits for
//!   good, not elected; an `exists` that fails so checks the master again.
//!
//! The book's master keeps acting while disconnected; only the expiry stops it. That is why its
//! side effects need a fencing token (the `czxid` of `/master`): a master paused past its
//! session's expiry wakes up believing it still leads.
//!
//! # Known-bad variant, kept as a positive control
//!
//! [`MasterVariant::NoWatch`]: a backup checks that a master exists but sets no watch on its
//! node, the mistake the book's `masterExists` warns against. While the master lives, nothing
//! shows; once its session expires, nobody learns that `/master` is gone, and the application
//! runs without a master for good.

use std::hash::{Hash, Hasher};

use serde::{Deserialize, Serialize};

use crate::error::ZkError;
use crate::event::{EventType, SessionEvent};
use crate::machine::{Command, Ids, Input, Machine, OpId, TimerId, RETRY_AFTER_MS};
use crate::request::{Request, Response};
use crate::symmetry::{Renaming, Symmetric};
use crate::types::CreateMode;

/// What the application asks of the election.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum MasterRequest {
    /// Run for master.
    Run,
}

/// What the election tells its host.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum MasterReport {
    /// This process is the master; `token` is the `czxid` of `/master`.
    Master {
        /// The fencing token.
        token: i64,
    },
    /// Another process is master; this one waits as a backup.
    Backup,
    /// The session expired: this process stopped.
    Stopped,
}

/// Which master election: the book's, or the known-bad variant.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MasterVariant {
    /// Backups watch the master's node and run again when it goes.
    #[default]
    Correct,
    /// Backups set no watch: nobody runs again once the master is gone.
    NoWatch,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Step {
    Run,
    Check,
    Watch,
}

/// `runForMaster` as a state machine.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MasterMachine {
    variant: MasterVariant,
    path: String,
    id: String,
    ids: Ids,
    step: Option<(OpId, Step)>,
    retry: Option<(TimerId, Step)>,
    role: Option<bool>,
    stopped: bool,
}

impl MasterMachine {
    /// An election on `path` (the book's `/master`) for the process `id`.
    pub fn new(path: &str, id: &str) -> MasterMachine {
        MasterMachine::with_variant(MasterVariant::Correct, path, id)
    }

    /// [`MasterMachine::new`], as `variant` does it.
    pub fn with_variant(variant: MasterVariant, path: &str, id: &str) -> MasterMachine {
        MasterMachine {
            variant,
            path: path.to_owned(),
            id: id.to_owned(),
            ids: Ids::default(),
            step: None,
            retry: None,
            role: None,
            stopped: false,
        }
    }

    /// True while this process believes it is master.
    pub fn is_master(&self) -> bool {
        self.role == Some(true)
    }

    /// The master's node, while this process believes it is master: its current session must
    /// own it.
    pub fn claimed_node(&self) -> Option<&str> {
        self.is_master().then_some(self.path.as_str())
    }

    fn issue(&mut self, step: Step, out: &mut Vec<Command<MasterReport>>) {
        let id = self.ids.fresh();
        let request = match step {
            Step::Run => Request::Create {
                path: self.path.clone(),
                data: self.id.as_bytes().to_vec(),
                mode: CreateMode::Ephemeral,
            },
            Step::Check => Request::GetData {
                path: self.path.clone(),
                watch: false,
            },
            Step::Watch => Request::Exists {
                path: self.path.clone(),
                watch: true,
            },
        };
        self.step = Some((id, step));
        out.push(Command::Op { id, request });
    }

    fn become_role(&mut self, master: Option<i64>, out: &mut Vec<Command<MasterReport>>) {
        match master {
            Some(token) => {
                self.role = Some(true);
                out.push(Command::Report(MasterReport::Master { token }));
            }
            None => {
                if self.role != Some(false) {
                    out.push(Command::Report(MasterReport::Backup));
                }
                self.role = Some(false);
                match self.variant {
                    MasterVariant::Correct => self.issue(Step::Watch, out),
                    // The known-bad backup: it saw a master, and will not look again.
                    MasterVariant::NoWatch => {}
                }
            }
        }
    }

    fn stop(&mut self, out: &mut Vec<Command<MasterReport>>) {
        if !self.stopped {
            self.stopped = true;
            self.step = None;
            self.retry = None;
            self.role = None;
            out.push(Command::Report(MasterReport::Stopped));
        }
    }

    fn on_reply(
        &mut self,
        step: Step,
        result: Result<Response, ZkError>,
        out: &mut Vec<Command<MasterReport>>,
    ) {
        match (step, result) {
            (_, Err(ZkError::SessionExpired)) => self.stop(out),
            (Step::Run, Ok(Response::Created(created))) => {
                self.become_role(Some(created.stat.czxid), out)
            }
            (Step::Run, Err(ZkError::NodeExists)) => self.become_role(None, out),
            // The create may have been applied: find out whose /master it is.
            (Step::Run | Step::Check, Err(ZkError::ConnectionLoss)) => {
                self.retry_later(Step::Check, out)
            }
            (Step::Check, Ok(Response::Data(data, stat))) => {
                let mine = data == self.id.as_bytes();
                self.become_role(mine.then_some(stat.czxid), out);
            }
            (Step::Check, Err(ZkError::NoNode)) => self.issue(Step::Run, out),
            (Step::Watch, Ok(Response::Exists(None))) => self.issue(Step::Run, out),
            (Step::Watch, Ok(Response::Exists(Some(_)))) => {}
            (Step::Watch, Err(ZkError::ConnectionLoss)) => self.retry_later(Step::Watch, out),
            // The book's `default:` branches. `masterCreateCallback`: not elected, the error
            // logged, nothing more; `masterCheckCallback`: the error logged, nothing more. The
            // process then waits for good (a parent wiped by data loss gives `NoNode`, for
            // one): "leader elected" judges what that costs.
            (Step::Run | Step::Check, Err(_)) => self.give_up(),
            // `masterExistsCallback`'s `default:` checks the master again.
            (Step::Watch, Err(_)) => self.issue(Step::Check, out),
            (step, other) => unreachable!("runForMaster: {step:?} answered {other:?}"),
        }
    }

    /// The book's master after an error it does not handle: not elected, and waiting on
    /// nothing (no request, no retry, no watch it acts on).
    fn give_up(&mut self) {
        self.step = None;
        self.retry = None;
        self.role = None;
    }

    fn retry_later(&mut self, step: Step, out: &mut Vec<Command<MasterReport>>) {
        let id = self.ids.fresh();
        self.step = None;
        self.retry = Some((id, step));
        out.push(Command::Timer {
            id,
            after_ms: RETRY_AFTER_MS,
        });
    }
}

impl Machine for MasterMachine {
    type Request = MasterRequest;
    type Report = MasterReport;

    /// `/master`, while it believes it is master (the book's process knows no other node).
    fn known_ephemerals(&self) -> Option<Vec<String>> {
        Some(self.claimed_node().map(str::to_owned).into_iter().collect())
    }

    fn handle(&mut self, input: Input<MasterRequest>, out: &mut Vec<Command<MasterReport>>) {
        self.ids.note(&input);
        if self.stopped {
            return;
        }
        match input {
            Input::Request(MasterRequest::Run) => {
                if self.role.is_none() && self.step.is_none() {
                    self.issue(Step::Run, out);
                }
            }
            Input::Reply { id, result } => {
                if self.step.is_some_and(|(expected, _)| expected == id) {
                    let (_, step) = self.step.take().expect("checked above");
                    self.on_reply(step, result, out);
                }
            }
            Input::Watch(event) => {
                if event.path == self.path
                    && event.event_type == EventType::NodeDeleted
                    && self.role == Some(false)
                {
                    self.issue(Step::Run, out);
                }
            }
            Input::Session(SessionEvent::Expired | SessionEvent::Closed) => self.stop(out),
            Input::Session(_) => {}
            Input::Timer(id) => {
                if self.retry.is_some_and(|(expected, _)| expected == id) {
                    let (_, step) = self.retry.take().expect("checked above");
                    self.issue(step, out);
                }
            }
        }
    }
}

crate::symmetric_as_hash!(Step);

/// The master's identities: its id (the master node's data).
impl Symmetric for MasterMachine {
    fn hash_renamed<H: Hasher>(&self, renaming: &Renaming<'_>, state: &mut H) {
        let MasterMachine {
            variant,
            path,
            id,
            ids,
            step,
            retry,
            role,
            stopped,
        } = self;
        (variant, ids, step, retry, role, stopped).hash(state);
        (path, id).hash_renamed(renaming, state);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{Created, Stat};

    fn op(out: &[Command<MasterReport>]) -> (OpId, Request) {
        out.iter()
            .find_map(|c| {
                if let Command::Op { id, request } = c {
                    Some((*id, request.clone()))
                } else {
                    None
                }
            })
            .expect("an operation")
    }

    fn timer(out: &[Command<MasterReport>]) -> TimerId {
        out.iter()
            .find_map(|c| {
                if let Command::Timer { id, .. } = c {
                    Some(*id)
                } else {
                    None
                }
            })
            .expect("a timer")
    }

    /// `master` after it ran for master and its create was answered `result`: what it did then.
    fn ran(
        mut master: MasterMachine,
        result: Result<Response, ZkError>,
    ) -> (MasterMachine, Vec<Command<MasterReport>>) {
        let mut out = Vec::new();
        master.handle(Input::Request(MasterRequest::Run), &mut out);
        let (id, _) = op(&out);
        out.clear();
        master.handle(Input::Reply { id, result }, &mut out);
        (master, out)
    }

    /// `master` after it ran for master and found another there.
    fn backup(master: MasterMachine) -> (MasterMachine, Vec<Command<MasterReport>>) {
        ran(master, Err(ZkError::NodeExists))
    }

    #[test]
    fn a_backup_watches_the_master_and_the_no_watch_variant_does_not() {
        for (variant, watches) in [
            (MasterVariant::Correct, true),
            (MasterVariant::NoWatch, false),
        ] {
            let (_, out) = backup(MasterMachine::with_variant(variant, "/master", "me"));
            assert!(
                out.contains(&Command::Report(MasterReport::Backup)),
                "{out:?}"
            );
            let watch = Request::Exists {
                path: "/master".into(),
                watch: true,
            };
            let watched = out
                .iter()
                .any(|c| matches!(c, Command::Op { request, .. } if *request == watch));
            assert_eq!(watched, watches, "{variant:?}: {out:?}");
        }
    }

    #[test]
    fn connection_loss_on_create_checks_whose_master_it_is() {
        for (data, expected) in [
            (b"me".to_vec(), MasterReport::Master { token: 9 }),
            (b"other".to_vec(), MasterReport::Backup),
        ] {
            let (mut master, mut out) = ran(
                MasterMachine::new("/master", "me"),
                Err(ZkError::ConnectionLoss),
            );
            let retry = timer(&out);
            out.clear();
            master.handle(Input::Timer(retry), &mut out);
            let (id, request) = op(&out);
            assert_eq!(
                request,
                Request::GetData {
                    path: "/master".into(),
                    watch: false
                },
                "checkMaster"
            );
            out.clear();
            let stat = Stat {
                czxid: 9,
                ..Stat::default()
            };
            master.handle(
                Input::Reply {
                    id,
                    result: Ok(Response::Data(data, stat)),
                },
                &mut out,
            );
            assert!(out.contains(&Command::Report(expected.clone())), "{out:?}");
        }
    }

    #[test]
    fn node_exists_makes_a_backup_that_runs_again_on_deletion_and_expiry_stops() {
        let (mut master, mut out) = backup(MasterMachine::new("/master", "me"));
        assert_eq!(out[0], Command::Report(MasterReport::Backup));
        let (id, request) = op(&out);
        assert_eq!(
            request,
            Request::Exists {
                path: "/master".into(),
                watch: true
            }
        );
        out.clear();
        master.handle(
            Input::Reply {
                id,
                result: Ok(Response::Exists(Some(Stat::default()))),
            },
            &mut out,
        );
        assert!(out.is_empty());
        let deleted = crate::WatchedEvent {
            event_type: EventType::NodeDeleted,
            path: "/master".into(),
            zxid: -1,
        };
        master.handle(Input::Watch(deleted), &mut out);
        let (id, request) = op(&out);
        assert!(matches!(request, Request::Create { .. }));
        out.clear();
        let created = Created {
            path: "/master".into(),
            stat: Stat {
                czxid: 12,
                ..Stat::default()
            },
        };
        master.handle(
            Input::Reply {
                id,
                result: Ok(Response::Created(created)),
            },
            &mut out,
        );
        assert_eq!(out, [Command::Report(MasterReport::Master { token: 12 })]);
        out.clear();
        master.handle(Input::Session(SessionEvent::Disconnected), &mut out);
        assert!(
            out.is_empty() && master.is_master(),
            "the book's master keeps acting while disconnected"
        );
        master.handle(Input::Session(SessionEvent::Expired), &mut out);
        assert_eq!(out, [Command::Report(MasterReport::Stopped)]);
    }

    /// The book's `default:` branches: a create that fails otherwise leaves the process not
    /// elected and waiting for good (no panic); an `exists` that fails otherwise checks again.
    #[test]
    fn an_unhandled_error_gives_up_as_the_book_does_and_a_failed_exists_checks_again() {
        let (mut master, out) = ran(MasterMachine::new("/master", "me"), Err(ZkError::NoNode));
        assert!(out.is_empty(), "nothing more: {out:?}");
        assert!(!master.is_master());
        let mut out = Vec::new();
        let deleted = crate::WatchedEvent {
            event_type: EventType::NodeDeleted,
            path: "/master".into(),
            zxid: -1,
        };
        master.handle(Input::Watch(deleted), &mut out);
        assert!(
            out.is_empty(),
            "a process that gave up acts on nothing: {out:?}"
        );

        let (mut backup, out) = backup(MasterMachine::new("/master", "me"));
        let (id, _) = op(&out);
        let mut out = Vec::new();
        backup.handle(
            Input::Reply {
                id,
                result: Err(ZkError::NoAuth),
            },
            &mut out,
        );
        let (_, request) = op(&out);
        assert_eq!(
            request,
            Request::GetData {
                path: "/master".into(),
                watch: false
            }
        );
    }
}
