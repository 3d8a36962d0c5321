//! [`LatchMachine`]: the one latch type every engine runs, holding either the project's own
//! latch ([`SafeLatch`], its variants and controls) or a Curator release's `LeaderLatch`
//! ([`CuratorLatch`]), chosen by the variant.

use std::hash::{Hash, Hasher};

use super::{LatchReport, LatchRequest, LatchVariant, SafeLatch};
use crate::curator::leader_latch::CuratorLatch;
use crate::machine::{Command, Input, Machine};
use crate::symmetry::{Renaming, Symmetric};

/// A latch of any variant, as a state machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LatchMachine(Kind);

#[derive(Clone, Debug, PartialEq, Eq)]
enum Kind {
    Own(SafeLatch),
    Curator(CuratorLatch),
}

impl LatchMachine {
    /// A latch of `variant` on `dir` for `participant`, with the host's `uuid` for protection.
    pub fn new(variant: LatchVariant, dir: &str, participant: &str, uuid: &str) -> LatchMachine {
        LatchMachine(match variant {
            LatchVariant::Curator(release) => {
                Kind::Curator(CuratorLatch::new(release, dir, participant, uuid))
            }
            own => Kind::Own(SafeLatch::new(own, dir, participant, uuid)),
        })
    }

    /// This latch, closed while its create is in flight, forgetting the create: the known-bad
    /// shortcut of the election's `forgetful-close` control (the project's own latch only).
    pub(crate) fn forgetting_creates_on_close(self) -> LatchMachine {
        match self.0 {
            Kind::Own(own) => LatchMachine(Kind::Own(own.forgetting_creates_on_close())),
            Kind::Curator(_) => panic!("forgetful-close is a control of the project's own latch"),
        }
    }

    /// True while this participant believes it leads.
    pub fn is_leader(&self) -> bool {
        match &self.0 {
            Kind::Own(own) => own.is_leader(),
            Kind::Curator(latch) => latch.is_leader(),
        }
    }

    /// This participant's node, whether or not it leads, once it knows it.
    pub fn own_node(&self) -> Option<&str> {
        match &self.0 {
            Kind::Own(own) => own.own_node(),
            Kind::Curator(latch) => latch.own_node(),
        }
    }

    /// The node this participant's leadership stands on, while it believes it leads.
    pub fn claimed_node(&self) -> Option<&str> {
        match &self.0 {
            Kind::Own(own) => own.claimed_node(),
            Kind::Curator(latch) => latch.claimed_node(),
        }
    }
}

impl Machine for LatchMachine {
    type Request = LatchRequest;
    type Report = LatchReport;

    /// Its node, leading or not.
    fn known_ephemerals(&self) -> Option<Vec<String>> {
        Some(self.own_node().map(str::to_owned).into_iter().collect())
    }

    fn settled(&self) -> bool {
        match &self.0 {
            Kind::Own(_) => true,
            Kind::Curator(latch) => latch.is_settled(),
        }
    }

    fn pipelined(&self) -> bool {
        matches!(self.0, Kind::Curator(_))
    }

    fn handle(&mut self, input: Input<LatchRequest>, out: &mut Vec<Command<LatchReport>>) {
        match &mut self.0 {
            Kind::Own(own) => own.handle(input, out),
            Kind::Curator(latch) => latch.handle(input, out),
        }
    }
}

/// As the latch it holds (the variant tells the two kinds apart).
impl Hash for LatchMachine {
    fn hash<H: Hasher>(&self, state: &mut H) {
        match &self.0 {
            Kind::Own(own) => own.hash(state),
            Kind::Curator(latch) => latch.hash(state),
        }
    }
}

impl Symmetric for LatchMachine {
    fn hash_renamed<H: Hasher>(&self, renaming: &Renaming<'_>, state: &mut H) {
        match &self.0 {
            Kind::Own(own) => own.hash_renamed(renaming, state),
            Kind::Curator(latch) => latch.hash_renamed(renaming, state),
        }
    }
}
