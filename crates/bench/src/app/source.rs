//! Where the probe's panels of `B` come from: one-sided gets of global memory
//! ([`Via::Direct`]), or reads of the owner's segment file `/mem/JOB/RANK/ID` through
//! the node's 9P server ([`Via::Files`]: memory reached through files, timed against
//! memory reached directly, as CellFS was measured). Either way a fetch is started
//! before the multiply of the previous panel and finished after it.

use std::sync::{Arc, Mutex};

use nf_ninep_client::{File, PendingReads, Root};
use nf_rma::{Handle, Kind, Rma, Shape, Xfer};
use serde::Serialize;

use super::AppError;

/// How a rank reads other ranks' blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Via {
    /// One-sided gets (`nf-rma`).
    Direct,
    /// 9P reads of the node's `/mem` files, many in flight.
    Files,
}

impl Via {
    /// The name used on the command line and in reports.
    pub fn name(&self) -> &'static str {
        match self {
            Via::Direct => "direct",
            Via::Files => "files",
        }
    }
}

impl std::str::FromStr for Via {
    type Err = String;

    fn from_str(s: &str) -> Result<Via, String> {
        match s {
            "direct" => Ok(Via::Direct),
            "files" => Ok(Via::Files),
            _ => Err(format!("unknown way to read blocks {s:?}: direct or files")),
        }
    }
}

/// The other ranks' blocks of `B`, as one way reads them.
pub enum Source<'a, 'w> {
    /// Global memory: each proc's block at `bases[proc]`.
    Direct {
        /// The job's global memory.
        rma: &'a Rma<'w>,
        /// Every proc's base of the `B` segment.
        bases: &'a [u64],
    },
    /// Each proc's segment file, open (`None` for this rank and for procs without a block).
    Files(Vec<Option<File>>),
}

/// A panel buffer: shared with the 9P client's reader thread, which copies replies
/// into it as they arrive.
pub type Panel = Arc<Mutex<Vec<f64>>>;

/// A fetch under way.
pub enum Fetch<'s> {
    /// A get, and the memory layer that completes it.
    Rma(&'s Rma<'s>, Handle),
    /// The reads of one range.
    Files(PendingReads<'s>),
}

impl<'a, 'w> Source<'a, 'w> {
    /// Opens every other proc's segment file through `root` (`paths[proc]`, `None`
    /// where there is nothing to read).
    pub fn files(root: &Root, paths: &[Option<String>], me: usize) -> Result<Self, AppError> {
        let mut files = Vec::with_capacity(paths.len());
        for (q, p) in paths.iter().enumerate() {
            files.push(match p {
                Some(p) if q != me => Some(
                    root.open(p, nf_ninep::types::LOpenFlags::RDONLY)
                        .map_err(|source| AppError::Files {
                            what: format!("opening {p}"),
                            source: Box::new(source),
                        })?,
                ),
                _ => None,
            });
        }
        Ok(Source::Files(files))
    }

    /// Starts copying `bytes` bytes at `offset` of `proc`'s block into the start of
    /// `dst`.
    ///
    /// # Safety
    /// For [`Source::Direct`], `dst`'s vector must not be resized, read or written
    /// until the fetch is finished (a one-sided get writes into it meanwhile).
    pub unsafe fn start(
        &self,
        proc: usize,
        offset: usize,
        bytes: usize,
        dst: &Panel,
    ) -> Result<Fetch<'_>, AppError> {
        match self {
            Source::Direct { rma, bases } => {
                let local = {
                    let mut v = dst.lock().unwrap_or_else(|e| e.into_inner());
                    assert!(bytes <= v.len() * 8, "a panel larger than its buffer");
                    v.as_mut_ptr().cast::<u8>()
                };
                let x = Xfer {
                    kind: Kind::Get,
                    proc,
                    shape: Shape::Contig {
                        local,
                        remote: bases[proc] + offset as u64,
                        bytes,
                    },
                };
                // SAFETY: `local` holds `bytes` bytes (asserted), and the caller keeps
                // the vector as it is, untouched, until the get completes.
                let h = unsafe { rma.start(&x) }?;
                Ok(Fetch::Rma(rma, h))
            }
            Source::Files(files) => {
                let file = files[proc].as_ref().ok_or(AppError::NoFile { proc })?;
                let reads = file
                    .start_read_into(offset as u64, dst, bytes)
                    .map_err(|source| AppError::Files {
                        what: format!("reading {}", file.path()),
                        source: Box::new(source),
                    })?;
                Ok(Fetch::Files(reads))
            }
        }
    }
}

impl Fetch<'_> {
    /// Waits for the data to be in place.
    pub fn finish(self) -> Result<(), AppError> {
        match self {
            Fetch::Rma(rma, h) => Ok(rma.wait(h)?),
            Fetch::Files(reads) => {
                let what = format!("reading {}", reads.path());
                reads.wait().map_err(|source| AppError::Files {
                    what,
                    source: Box::new(source),
                })
            }
        }
    }
}
