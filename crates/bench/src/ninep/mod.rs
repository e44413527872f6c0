//! `nf bench 9p`: a 9P2000.L file server measured through the ninefold client, and
//! compared with another server (Debian's diod) exporting the same directory, in the
//! same run.
//!
//! Per msize (8 KiB … 1 MiB by default) and per alternation, each server gets, in turn
//! (the order flips every time, so neither always runs first):
//!
//! 1. a fresh connection at that msize and an attach;
//! 2. small operations: cycles of walk / open / read 1 B / clunk of `small.txt`, one
//!    sample per cycle (four requests);
//! 3. a streaming read of `stream.bin`: full-size `Tread`s, one sample per message;
//! 4. a streaming write of a fresh file: full-size `Twrite`s, one sample per message.
//!
//! Rates use the median sample (robust on a loaded machine): cycles/s = 10^6 / median
//! µs, MB/s = bytes per message / median µs (MB = 10^6 B). Each case's rate pools the
//! samples of all rounds; its per-round rates are kept too. The ratio ours / theirs
//! (above 1 is better for us) is the median over rounds of the two servers' rates in
//! the same round — neighbours in time, so a load spike on a shared machine hits
//! both — and is given only where both servers agreed to the msize asked.
//!
//! [`load`] measures many clients at once instead (`nf bench 9p --clients`).

mod compare;
pub mod load;
pub mod ops;
pub mod servers;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use nf_ninep_client::ClientError;

pub use compare::{Case, Comparison, RatioRow, ServerInfo, Test};
pub use servers::Served;

/// A 9P benchmark failed.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// A server could not be started.
    #[error("9P server {name}: {reason}")]
    Server {
        /// Which server.
        name: String,
        /// What went wrong, and what to do.
        reason: String,
    },
    /// A server could not be reached (connecting, version).
    #[error("{server} at msize {msize}: connecting: {source}")]
    Connect {
        /// Which server.
        server: String,
        /// The msize asked for.
        msize: u32,
        /// What the way of connecting said.
        source: servers::ConnectFailure,
    },
    /// A request through the client failed.
    #[error("{server} at msize {msize}: {what}: {source}")]
    Client {
        /// Which server.
        server: String,
        /// The msize asked for.
        msize: u32,
        /// What was being done.
        what: &'static str,
        /// The client's error (boxed: it is large).
        source: Box<ClientError>,
    },
    /// The export directory could not be prepared.
    #[error("preparing the export directory {}: {source}", path.display())]
    Export {
        /// The file or directory.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
}

/// What to measure.
#[derive(Debug, Clone)]
pub struct Params {
    /// The msizes asked for, in bytes.
    pub msizes: Vec<u32>,
    /// Timed small-operation cycles per server, msize and alternation.
    pub small_iters: usize,
    /// Untimed cycles before them.
    pub small_warmup: usize,
    /// Bytes each streaming read and write moves (at least 64 messages' worth).
    pub stream_bytes: u64,
    /// Reads in flight in the streaming read (1: one after another).
    pub depth: usize,
    /// Rounds of (server A, server B) per msize.
    pub alternations: usize,
    /// The user to attach as: this process's own account (a local `nf serve` admits a
    /// process only as itself, root as anyone), or empty over TLS (the certificate's
    /// name).
    pub user: String,
}

/// 8 KiB, 16 KiB, … 1 MiB.
pub fn default_msizes() -> Vec<u32> {
    (13..=20).map(|p| 1u32 << p).collect()
}

/// Fills `dir` with the files the operations use: [`ops::SMALL_FILE`], a
/// [`ops::STREAM_FILE`] of `stream_bytes` (capped at 64 MiB; reads wrap around) and
/// [`load::LOAD_FILE`].
pub fn prepare_export(dir: &Path, stream_bytes: u64) -> Result<(), BenchError> {
    let write = |name: &str, data: &[u8]| {
        let path = dir.join(name);
        std::fs::write(&path, data).map_err(|source| BenchError::Export { path, source })
    };
    write(ops::SMALL_FILE, b"0123456789abcdef\n")?;
    let len = stream_bytes.clamp(1 << 20, 64 << 20) as usize;
    let data: Vec<u8> = (0..len).map(|i| (i * 31 % 253) as u8).collect();
    write(ops::STREAM_FILE, &data)?;
    write(load::LOAD_FILE, &data[..load::LOAD_BYTES])
}

/// The samples of one server at one msize and alternation.
struct Round {
    negotiated: u32,
    small: Vec<f64>,
    read: (Vec<f64>, usize),
    write: (Vec<f64>, usize),
}

fn measure(served: &Served, msize: u32, p: &Params) -> Result<Round, BenchError> {
    let err = |what: &'static str| {
        let server = served.name.clone();
        move |source| BenchError::Client {
            server,
            msize,
            what,
            source: Box::new(source),
        }
    };
    let client = served
        .connect(msize)
        .map_err(|source| BenchError::Connect {
            server: served.name.clone(),
            msize,
            source,
        })?;
    let root = client
        .attach(&p.user, &served.aname)
        .map_err(err("attaching"))?;
    let small = ops::small_ops(&root, p.small_iters, p.small_warmup)
        .map_err(err("walk / open / read 1 B / clunk"))?;
    let min_stream = 64 * u64::from(client.msize());
    let bytes = p.stream_bytes.max(min_stream);
    let read = ops::stream_read(&root, bytes, p.depth).map_err(err("streaming read"))?;
    let name = format!("written-by-{}.bin", served.name);
    let write = ops::stream_write(&root, &name, bytes).map_err(err("streaming write"))?;
    Ok(Round {
        negotiated: client.msize(),
        small,
        read,
        write,
    })
}

/// The samples of one server, msize and test, over every round, and each round's
/// rate.
struct Pool {
    negotiated: u32,
    bytes: usize,
    samples: Vec<f64>,
    rounds: Vec<f64>,
}

/// Runs every case on `servers` (the first is "ours", the second "theirs"), calling
/// `progress(server, msize)` before each, and compares them.
pub fn run(
    servers: &[Served],
    p: &Params,
    mut progress: impl FnMut(&str, u32),
) -> Result<Comparison, BenchError> {
    let mut pooled: BTreeMap<(usize, u32, Test), Pool> = BTreeMap::new();
    for (mi, &msize) in p.msizes.iter().enumerate() {
        for k in 0..p.alternations {
            let mut order: Vec<usize> = (0..servers.len()).collect();
            if (mi + k) % 2 == 1 {
                order.reverse();
            }
            for s in order {
                progress(&servers[s].name, msize);
                let r = measure(&servers[s], msize, p)?;
                for (test, bytes, samples) in [
                    (Test::Small, 1, r.small),
                    (Test::Read, r.read.1, r.read.0),
                    (Test::Write, r.write.1, r.write.0),
                ] {
                    let slot = pooled.entry((s, msize, test)).or_insert(Pool {
                        negotiated: r.negotiated,
                        bytes,
                        samples: Vec::new(),
                        rounds: Vec::new(),
                    });
                    slot.rounds.extend(compare::rate(test, bytes, &samples));
                    slot.samples.extend(samples);
                }
            }
        }
    }
    let cases = pooled
        .into_iter()
        .filter_map(|((s, msize, test), pool)| {
            let mut case = Case::new(
                &servers[s].name,
                msize,
                pool.negotiated,
                test,
                pool.bytes,
                &pool.samples,
            )?;
            case.round_rates = pool.rounds;
            Some(case)
        })
        .collect();
    Ok(Comparison::new(cases, servers, p))
}
