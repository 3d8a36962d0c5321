//! Every integration test of `zkh-sim`, in one test binary whose modules are the other files of
//! this folder. Each file was a binary of its own, and linking each one against the crate and
//! its dependencies, in the normal and the simulated build, took minutes of every cold build
//! (docs/performance.md, "One test binary a crate"). One file's tests run by its module name:
//! `RUSTFLAGS="--cfg madsim" cargo test -p zkh-sim --test sim faults::`.

#[cfg(madsim)]
mod common;

mod behaviour;
mod determinism;
mod faults;
mod guarantees;
mod guarantees_atomicity;
mod guarantees_first_change;
mod guarantees_leader;
mod guarantees_sync;
mod liveness;
mod local_expiry;
mod net_fifo;
mod net_refused;
mod probe;
mod recipes;
mod smoke;
