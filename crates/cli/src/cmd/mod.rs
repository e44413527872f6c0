//! One module per `nf` subcommand.

pub mod bench;
pub mod demo;
pub mod files;
pub mod run;
pub mod serve;
pub mod tune;
