//! Every integration test of `zkh-model`, in one test binary whose modules are the other files of
//! this folder. Each file was a binary of its own, and linking each one against the crate and
//! its dependencies, in the normal and the simulated build, took minutes of every cold build
//! (docs/performance.md, "One test binary a crate"). One file's tests run by its module name:
//! `cargo test -p zkh-model --test model check::`.

mod common;
#[cfg(not(madsim))]
mod support;

mod check;
mod compaction;
mod depth_first;
mod differential;
mod elastic_job;
mod election;
mod forgetting;
mod invariants;
mod latch;
mod livelock;
mod lock;
mod ownership;
mod parallel;
mod preemption;
mod properties;
mod reads_first;
mod reduction;
mod replay;
mod schedule;
mod semantics;
mod symmetry;
mod walks;
