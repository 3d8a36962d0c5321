//! The same ID allocator written once for both engines: a sans-IO machine (requests in,
//! ZooKeeper operations out, no I/O of its own) with its application, the model checker's
//! [`Workload`]. `zkh_scenarios::custom::model` explores every interleaving of its clients
//! within a fault budget; registered as `Machined<AllocatorWorkload>`
//! (`id-allocator-machine`), it runs on the simulated ensemble too, under scenario files, from
//! `cargo test` and from the crate's own `zkharness`.
//!
//! The machine does what the async recipe in the crate's root does, step by step: `getData` of
//! the counter, then `setData` of the number plus one at the version read (`unversioned`: at any
//! version); `BadVersion` reads again; `ConnectionLoss` on the write hands out nothing (the
//! `loss-as-success` variant hands out the number). Each client's application allocates
//! [`ALLOCATIONS`] IDs, asking again after a failed one, and records each ID as a side effect on
//! the resource `ids`. "ids unique" is one function of the history's entries, judged by both
//! engines.
//!
//! Not modelled: the counter's creation (the model's directories exist from the start, with no
//! data, read as 0; the simulator's clients make them the same way), session events (a client
//! whose session ended just fails its next operation and asks again).

use std::hash::{Hash, Hasher};
use std::sync::LazyLock;

use stateright::Expectation;
use zkh_model::check::{Judge, Workload};
use zkh_model::history::Entries;
use zkh_model::properties::{Class, Finding};
use zkh_model::{HistoryEvent, ZkModel};
use zkh_recipes::machine::{Command, Ids, Input, Machine};
use zkh_recipes::request::{Request, Response};
use zkh_recipes::symmetry::{Renaming, Symmetric};
use zkh_recipes::ZkError;
use zkh_scenarios::custom::{KnownBad, MachineRecipe, Property};

use crate::{COUNTER, IDS};

/// IDs each client allocates.
pub const ALLOCATIONS: u32 = 2;

/// The variants, as the async recipe has them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Variant {
    /// Writes at the version read.
    Correct,
    /// Writes at any version.
    Unversioned,
    /// Takes a `ConnectionLoss` on the write as success.
    LossAsSuccess,
}

/// What a client is waiting for.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Step {
    Idle,
    Reading { op: u64 },
    Writing { op: u64, next: i64 },
}

/// One client's allocator.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct AllocatorMachine {
    variant: Variant,
    step: Step,
    ids: Ids,
}

/// What the application asks.
#[derive(Clone, Debug)]
pub enum Allocate {
    /// Allocate one ID.
    One,
}

/// What the machine tells the application.
#[derive(Clone, Debug, PartialEq)]
pub enum Allocation {
    /// This ID is the client's.
    Allocated(i64),
    /// Nothing was handed out (an error, or an unknown outcome).
    Failed,
}

impl AllocatorMachine {
    fn read(&mut self, out: &mut Vec<Command<Allocation>>) {
        let op = self.ids.fresh();
        self.step = Step::Reading { op };
        let request = Request::GetData {
            path: COUNTER.to_owned(),
            watch: false,
        };
        out.push(Command::Op { id: op, request });
    }

    fn done(&mut self, report: Allocation, out: &mut Vec<Command<Allocation>>) {
        self.step = Step::Idle;
        out.push(Command::Report(report));
    }
}

impl Machine for AllocatorMachine {
    type Request = Allocate;
    type Report = Allocation;

    fn handle(&mut self, input: Input<Allocate>, out: &mut Vec<Command<Allocation>>) {
        match input {
            Input::Request(Allocate::One) if self.step == Step::Idle => self.read(out),
            Input::Reply { id, result } => {
                self.ids.answered(id);
                match (self.step.clone(), result) {
                    (Step::Reading { op }, Ok(Response::Data(data, stat))) if op == id => {
                        let read: i64 = std::str::from_utf8(&data)
                            .ok()
                            .and_then(|text| text.parse().ok())
                            .unwrap_or(0);
                        let next = read + 1;
                        let op = self.ids.fresh();
                        self.step = Step::Writing { op, next };
                        let version = match self.variant {
                            Variant::Unversioned => -1,
                            _ => stat.version,
                        };
                        let request = Request::SetData {
                            path: COUNTER.to_owned(),
                            data: next.to_string().into_bytes(),
                            version,
                        };
                        out.push(Command::Op { id: op, request });
                    }
                    (Step::Writing { op, next }, Ok(_)) if op == id => {
                        self.done(Allocation::Allocated(next), out)
                    }
                    (Step::Writing { op, .. }, Err(ZkError::BadVersion)) if op == id => {
                        self.read(out)
                    }
                    (Step::Writing { op, next }, Err(ZkError::ConnectionLoss))
                        if op == id && self.variant == Variant::LossAsSuccess =>
                    {
                        self.done(Allocation::Allocated(next), out)
                    }
                    (Step::Reading { op } | Step::Writing { op, .. }, _) if op == id => {
                        self.done(Allocation::Failed, out)
                    }
                    _ => {}
                }
            }
            Input::Request(_) | Input::Watch(_) | Input::Session(_) | Input::Timer(_) => {}
        }
    }
}

/// No identities: the machine names no node of its own.
impl Symmetric for AllocatorMachine {
    fn hash_renamed<H: Hasher>(&self, _: &Renaming<'_>, state: &mut H) {
        self.hash(state);
    }
}

/// A client's application: how many IDs it still allocates.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Left(u32);

impl Symmetric for Left {
    fn hash_renamed<H: Hasher>(&self, _: &Renaming<'_>, state: &mut H) {
        self.hash(state);
    }
}

/// The allocator's workload: every client allocates [`ALLOCATIONS`] IDs.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct AllocatorWorkload {
    /// The variant.
    pub variant: Variant,
}

impl Workload for AllocatorWorkload {
    type Machine = AllocatorMachine;
    type Request = Allocate;
    type Report = Allocation;
    type App = Left;

    fn dir(&self) -> &str {
        COUNTER
    }

    fn client(&self, _: usize) -> (AllocatorMachine, Left, Vec<Allocate>) {
        let machine = AllocatorMachine {
            variant: self.variant,
            step: Step::Idle,
            ids: Ids::default(),
        };
        (machine, Left(ALLOCATIONS), vec![Allocate::One])
    }

    fn on_report(
        &self,
        app: &mut Left,
        report: Allocation,
        effects: &mut Vec<HistoryEvent>,
        client: u32,
    ) -> Vec<Allocate> {
        if let Allocation::Allocated(id) = report {
            effects.push(HistoryEvent::SideEffect {
                client,
                resource: IDS.to_owned(),
                token: Some(id),
                accepted: true,
                detail: format!("allocated {id}"),
            });
            app.0 = app.0.saturating_sub(1);
        }
        if app.0 > 0 {
            vec![Allocate::One]
        } else {
            Vec::new()
        }
    }

    fn act(&self, _: &mut Left, _: &mut Vec<HistoryEvent>, _: u32) -> Option<Vec<Allocate>> {
        None
    }

    fn can_act(&self, _: &Left, _: &ZkModel) -> bool {
        false
    }

    fn finished(&self, app: &Left) -> bool {
        app.0 == 0
    }

    fn judges() -> &'static [Judge<Self>] {
        static JUDGES: LazyLock<Vec<Judge<AllocatorWorkload>>> = LazyLock::new(|| {
            vec![Judge {
                name: "ids unique",
                expectation: Expectation::Always,
                finding: |recorded, _| ids_unique(recorded),
            }]
        });
        &JUDGES
    }
}

/// "ids unique", over any history's entries: the model checker's and the simulator's.
pub fn ids_unique(history: &impl Entries) -> Finding {
    let mut seen = std::collections::BTreeMap::new();
    let mut twice = None;
    for event in history.each().map(|entry| &entry.event) {
        if let HistoryEvent::SideEffect {
            client,
            resource,
            token: Some(id),
            accepted: true,
            ..
        } = event
        {
            if resource != IDS {
                continue;
            }
            if let Some(other) = seen.insert(*id, *client) {
                twice.get_or_insert(format!(
                    "ID {id} was handed out to client {other} and then to client {client}"
                ));
            }
        }
    }
    Finding::new("ids unique", Class::Always, twice, || {
        format!("{} IDs, each handed out once", seen.len())
    })
}

impl MachineRecipe for AllocatorWorkload {
    const NAME: &'static str = "id-allocator-machine";
    const VARIANTS: &'static [&'static str] = &["correct", "unversioned", "loss-as-success"];

    fn of_variant(variant: &str) -> Self {
        let variant = match variant {
            "unversioned" => Variant::Unversioned,
            "loss-as-success" => Variant::LossAsSuccess,
            _ => Variant::Correct,
        };
        AllocatorWorkload { variant }
    }

    fn properties() -> Vec<Property> {
        vec![Property::from_finding(
            "ids unique",
            Class::Always,
            "No ID is handed out twice.",
            ids_unique,
        )]
    }

    /// The two controls and the checks that catch them: a check of either that ends without
    /// a violation (one client; no faults for the lost reply's) prints its entry's command.
    fn known_bad() -> Vec<KnownBad> {
        let caught = |variant, options, steps| KnownBad {
            recipe: Self::NAME,
            variant,
            options,
            property: "ids unique",
            steps,
        };
        vec![
            caught("unversioned", &["--clients", "2", "--faults", "none"], 8),
            caught(
                "loss-as-success",
                &["--clients", "2", "--faults", "drop-request=1"],
                8,
            ),
        ]
    }
}
