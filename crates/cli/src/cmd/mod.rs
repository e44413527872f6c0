//! One module per `nf` subcommand.

pub mod bench;
pub mod bench_9p;
pub mod bench_rma;
pub mod demo;
pub mod run;
pub mod tune;
