//! Scenario programs that run as the ranks of a real job, kept out of the library
//! crates they exercise: `nf-core-check` (messages, collectives, faults of `nf-core`),
//! `nf-rma-check` (one-sided operations of `nf-rma`), `nf-launch-testprog` and
//! `nf-launch-testrun` (the launcher's ranks and driver). The tests that launch them on
//! local ranks and on namespace hosts live with the layer they test (`tests/jobs/` of
//! core, rma and launch) and are built as this package's tests (`Cargo.toml`); the
//! bench scripts run the programs too.
//!
//! The library itself is empty: the programs are the crate.
