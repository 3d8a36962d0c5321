//! Reports a person and a CI can read: the run report and the sweep summary as data
//! ([`types`]), and their renderings.
//!
//! - [`types`]: what `zkharness run --out` and `sweep --json` write, with JSON Schemas in
//!   `reports/schema/`;
//! - [`timeline`]: a run (or a model checker's counterexample) as one self-contained HTML page:
//!   a lane per client (connection, session, role, ephemeral nodes), a lane for the ensemble,
//!   faults as shaded spans, the violation marked and linked to the history rows that show it,
//!   and the whole history as a filterable table;
//! - [`junit`]: a sweep as JUnit XML for CI;
//! - [`markdown`]: a sweep as a Markdown summary for a CI job page;
//! - [`herd`]: waiters woken per release against waiters, measured and drawn (a lock's herd
//!   effect).
//!
//! This crate renders and does nothing else: it runs nothing and reads no files.

pub mod herd;
pub mod junit;
pub mod markdown;
pub mod timeline;
pub mod types;
