//! One module per `nf` subcommand.

pub mod bench;
pub mod bench_9p;
pub mod bench_rma;
pub mod cert;
pub mod config;
pub mod demo;
pub mod files;
pub mod progress;
pub mod run;
pub mod serve;
pub mod tune;
