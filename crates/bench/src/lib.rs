//! Benchmark support for ninefold: sample statistics, JSON / CSV / table reports and
//! PNG plots, and tuning ([`tune`]: measuring and choosing this host's settings). The measuring code lives next to these modules; the reports share one
//! JSON shape with the C MPI ping-pong in `bench/mpi/` so runs can be compared.

pub mod app;
pub mod equivalence;
pub mod heatmap;
pub mod html;
pub mod loggp;
pub mod ninep;
pub mod params;
pub mod pingpong;
pub mod plot;
pub mod report;
pub mod rings;
pub mod rma;
mod rng;
pub mod shmem;
pub mod stats;
pub mod tune;
pub mod variability;
pub mod watch;

pub use plot::SETTINGS;
