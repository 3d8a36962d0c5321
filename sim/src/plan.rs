//! A fault plan written in Rust, beside the scenario file's `[faults]` tables: the same
//! [`FaultPlan`], built step by step in a test.
//!
//! ```
//! use zkh_sim::fault::{Fault, FaultPlan, NodeRef, OpKind, ServerRef, Trigger};
//!
//! let plan = FaultPlan::new()
//!     .at_ms(3_000, Fault::Partition {
//!         a: [NodeRef::Client(0)].into(),
//!         b: [NodeRef::AllServers].into(),
//!         one_way: false,
//!         duration_ms: 6_000,
//!     })
//!     .at_ms(12_000, Fault::KillServer { server: ServerRef::Leader })
//!     .when(Trigger::nth(Some(1), OpKind::Create, "/locks/stock/", 3),
//!           Fault::DropReply { client: 1 });
//! assert_eq!(plan.scripted.len(), 2);
//! assert_eq!(plan.triggered.len(), 1);
//! ```
//!
//! A plan built here is checked as a file's is, when a test gives it to a scenario
//! (`zkh_scenarios::custom::SimTest::faults`): a client or server it names must exist, a length
//! must fit the run.

use crate::fault::{
    Fault, FaultPlan, OpKind, RandomFaults, ScriptedFault, Trigger, TriggeredFault,
};

impl FaultPlan {
    /// A plan with no fault.
    pub fn new() -> FaultPlan {
        FaultPlan::default()
    }

    /// Adds `fault` at `at_ms` simulated milliseconds from the start of the run
    /// (`[[faults.scripted]]`).
    pub fn at_ms(mut self, at_ms: u64, fault: Fault) -> FaultPlan {
        self.scripted.push(ScriptedFault { at_ms, fault });
        self
    }

    /// Adds `fault` when `trigger` happens (`[[faults.triggered]]`).
    pub fn when(mut self, trigger: Trigger, fault: Fault) -> FaultPlan {
        self.triggered.push(TriggeredFault {
            when: trigger,
            fault,
        });
        self
    }

    /// Draws faults from the seed at these rates (`[faults.random]`), in place of any given.
    pub fn random(mut self, random: RandomFaults) -> FaultPlan {
        self.random = Some(random);
        self
    }
}

impl Trigger {
    /// The `nth` operation of kind `op` (from 1) under `path_prefix`, by `client` (any client if
    /// none).
    pub fn nth(client: Option<u32>, op: OpKind, path_prefix: &str, nth: u32) -> Trigger {
        Trigger {
            client,
            op,
            path_prefix: path_prefix.to_owned(),
            nth,
        }
    }
}
