//! Where the probe's panels of `B` come from: one-sided gets of global memory
//! ([`Via::Direct`]), or reads of the owner's segment file `/mem/JOB/RANK/ID` through
//! the node's 9P server ([`Via::Files`], seed 000's CellFS comparison). Either way a
//! fetch is started before the multiply of the previous panel and finished after it.

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

/// A fetch under way.
pub enum Fetch<'s> {
    /// A get.
    Rma(Handle),
    /// The reads of one range.
    Files(PendingReads<'s>, *mut u8),
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

    /// Starts copying `bytes` bytes at `offset` of `proc`'s block into `dst`.
    ///
    /// # Safety
    /// `dst` must stay valid for writes of `bytes` bytes, and untouched, until the
    /// fetch is finished (or dropped, for [`Fetch::Files`]; a dropped get is waited
    /// for by the next fence or barrier).
    pub unsafe fn start(
        &self,
        proc: usize,
        offset: usize,
        bytes: usize,
        dst: *mut u8,
    ) -> Result<Fetch<'_>, AppError> {
        match self {
            Source::Direct { rma, bases } => {
                let x = Xfer {
                    kind: Kind::Get,
                    proc,
                    shape: Shape::Contig {
                        local: dst,
                        remote: bases[proc] + offset as u64,
                        bytes,
                    },
                };
                // SAFETY: the caller keeps `dst` writable until the get completes.
                let h = unsafe { rma.start(&x) }?;
                Ok(Fetch::Rma(h))
            }
            Source::Files(files) => {
                let file = files[proc].as_ref().ok_or(AppError::NoFile { proc })?;
                let reads = file
                    .start_read_exact(offset as u64, bytes)
                    .map_err(|source| AppError::Files {
                        what: format!("reading {}", file.path()),
                        source: Box::new(source),
                    })?;
                Ok(Fetch::Files(reads, dst))
            }
        }
    }

    /// Waits for `fetch`'s data to be in place.
    pub fn finish(&self, fetch: Fetch<'_>) -> Result<(), AppError> {
        match (self, fetch) {
            (Source::Direct { rma, .. }, Fetch::Rma(h)) => Ok(rma.wait(h)?),
            (_, Fetch::Files(reads, dst)) => {
                // SAFETY: `start`'s caller keeps `dst` valid for `reads.len()` bytes
                // and untouched until now; nothing else writes there meanwhile.
                let buf = unsafe { std::slice::from_raw_parts_mut(dst, reads.len()) };
                let what = format!("reading {}", reads.path());
                reads.wait_into(buf).map_err(|source| AppError::Files {
                    what,
                    source: Box::new(source),
                })
            }
            (Source::Files(_), Fetch::Rma(_)) => unreachable!("a get started by files"),
        }
    }
}
