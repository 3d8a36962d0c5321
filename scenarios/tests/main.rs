//! Every integration test of `zkh-scenarios`, in one test binary whose modules are the other files of
//! this folder. Each file was a binary of its own, and linking each one against the crate and
//! its dependencies, in the normal and the simulated build, took minutes of every cold build
//! (docs/performance.md, "One test binary a crate"). One file's tests run by its module name:
//! `cargo test -p zkh-scenarios --test scenarios cli::`.

mod common;
mod proptest_config;

mod bench;
mod bench_real;
mod builtins_registered;
mod cli;
mod curator_profiles;
mod custom_model;
mod custom_registration;
mod differential;
mod fuzz_own;
mod fuzz_values;
mod guarantees_real;
mod host_api;
mod layering;
mod machined;
mod merge;
mod plan_builder;
mod replay;
mod reports;
mod scenario_files;
mod sim_cli;
mod watchdog;
