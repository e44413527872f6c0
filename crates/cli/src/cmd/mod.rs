//! One module per `nf` subcommand.

pub mod bench;
pub mod bench_9p;
pub mod bench_app;
pub mod bench_loggp;
pub mod bench_rings;
pub mod bench_rma;
pub mod bench_shmem;
pub mod bench_watch;
pub mod cert;
pub mod config;
pub mod copy_tree;
pub mod demo;
pub mod exec;
pub mod files;
pub mod gateway;
pub mod options_file;
pub mod progress;
pub mod run;
pub mod serve;
pub mod tune;

/// A command line that cannot work as given (exit status 2), as opposed to a failure
/// while running it.
#[derive(Debug)]
pub struct Usage(pub String);

impl std::fmt::Display for Usage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Usage {}
