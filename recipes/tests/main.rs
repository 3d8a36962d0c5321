//! Every integration test of `zkh-recipes`, in one test binary whose modules are the other files of
//! this folder. Each file was a binary of its own, and linking each one against the crate and
//! its dependencies, in the normal and the simulated build, took minutes of every cold build
//! (docs/performance.md, "One test binary a crate"). One file's tests run by its module name:
//! `cargo test -p zkh-recipes --test recipes real_client::`.

#[cfg(not(madsim))]
mod common;

mod real_client;
mod real_recipes;
