//! [`LockMachine`]: the one lock type every engine runs, holding either the project's own lock
//! ([`SafeLock`], its variants and controls) or a Curator release's `InterProcessMutex`
//! ([`CuratorMutex`]), chosen by the variant.

use std::hash::{Hash, Hasher};

use super::{LockReport, LockRequest, LockVariant, SafeLock};
use crate::curator::interprocess_mutex::CuratorMutex;
use crate::machine::{Command, Input, Machine};
use crate::symmetry::{Renaming, Symmetric};

/// A lock of any variant, as a state machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LockMachine(Kind);

// Unboxed on purpose: the model checker clones every state it visits, and a box would be an
// allocation per clone; each machine holds exactly one variant for its whole life.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Eq)]
enum Kind {
    Own(SafeLock),
    Curator(CuratorMutex),
}

impl LockMachine {
    /// A lock of `variant` on the directory `dir`, with the host's `uuid` for protection.
    pub fn new(variant: LockVariant, dir: &str, uuid: &str) -> LockMachine {
        LockMachine(match variant {
            LockVariant::Curator(release) => Kind::Curator(CuratorMutex::new(release, dir, uuid)),
            own => Kind::Own(SafeLock::new(own, dir, uuid)),
        })
    }

    /// The variant.
    pub fn variant(&self) -> LockVariant {
        match &self.0 {
            Kind::Own(own) => own.variant(),
            Kind::Curator(mutex) => LockVariant::Curator(mutex.release()),
        }
    }

    /// True while the lock is held.
    pub fn is_held(&self) -> bool {
        match &self.0 {
            Kind::Own(own) => own.is_held(),
            Kind::Curator(mutex) => mutex.is_held(),
        }
    }

    /// This client's node, holding or waiting, once it knows it.
    pub fn own_node(&self) -> Option<&str> {
        match &self.0 {
            Kind::Own(own) => own.own_node(),
            Kind::Curator(mutex) => mutex.own_node(),
        }
    }

    /// The node the lock is held by, while this client believes it holds it.
    pub fn claimed_node(&self) -> Option<&str> {
        match &self.0 {
            Kind::Own(own) => own.claimed_node(),
            Kind::Curator(mutex) => mutex.claimed_node(),
        }
    }
}

impl Machine for LockMachine {
    type Request = LockRequest;
    type Report = LockReport;

    /// Its node, holding or waiting (and a Curator mutex's nodes still being deleted).
    fn known_ephemerals(&self) -> Option<Vec<String>> {
        match &self.0 {
            Kind::Own(own) => own.known_ephemerals(),
            Kind::Curator(mutex) => Some(mutex.known_nodes()),
        }
    }

    fn settled(&self) -> bool {
        match &self.0 {
            Kind::Own(_) => true,
            Kind::Curator(mutex) => mutex.is_settled(),
        }
    }

    fn pipelined(&self) -> bool {
        matches!(self.0, Kind::Curator(_))
    }

    fn handle(&mut self, input: Input<LockRequest>, out: &mut Vec<Command<LockReport>>) {
        match &mut self.0 {
            Kind::Own(own) => own.handle(input, out),
            Kind::Curator(mutex) => mutex.handle(input, out),
        }
    }
}

/// As the lock it holds (the variant tells the two kinds apart).
impl Hash for LockMachine {
    fn hash<H: Hasher>(&self, state: &mut H) {
        match &self.0 {
            Kind::Own(own) => own.hash(state),
            Kind::Curator(mutex) => mutex.hash(state),
        }
    }
}

impl Symmetric for LockMachine {
    fn hash_renamed<H: Hasher>(&self, renaming: &Renaming<'_>, state: &mut H) {
        match &self.0 {
            Kind::Own(own) => own.hash_renamed(renaming, state),
            Kind::Curator(mutex) => mutex.hash_renamed(renaming, state),
        }
    }
}
