//! Native RMA (`fi_write` / `fi_read`) on registered memory, for the rma layer.
//!
//! 1. [`OfiTransport::register`] allocates a region (page-aligned, zeroed) registered
//!    for local and remote access; [`OfiTransport::remote`] is what a peer needs to
//!    reach it ([`RemoteRegion`], 24 bytes to publish).
//! 2. [`OfiTransport::put`] / [`OfiTransport::get`] issue one operation in a send slot
//!    (the same `queue_limit` as messaging: `NoCredit` when none is free). The local
//!    bytes must not be touched until [`OfiTransport::rma_in_flight`] says the
//!    operation completed; completions are read by `poll` or
//!    [`OfiTransport::progress`]. A failed operation marks its peer lost, as a send does.
//! 3. [`OfiTransport::deregister`] forgets a region; its memory is freed once no
//!    operation uses it.
//!
//! A provider without `FI_RMA` (or a transport opened with `rma: false`) answers
//! [`TransportError::Unsupported`].

use std::sync::Arc;

use super::ffi::Sent;
use super::{ofi_error, OfiTransport, Op};
use crate::error::TransportError;
use crate::SendStatus;

/// A region registered with this transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegionId(usize);

/// How a peer names one of our regions: its remote base address, key and length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RemoteRegion {
    /// Remote address of byte 0 (0 when the provider addresses regions by offset).
    pub base: u64,
    /// The registration key.
    pub key: u64,
    /// Length in bytes.
    pub len: u64,
}

impl RemoteRegion {
    /// Bytes to publish: base, key, len, little-endian.
    pub fn to_bytes(&self) -> [u8; 24] {
        let mut b = [0u8; 24];
        b[0..8].copy_from_slice(&self.base.to_le_bytes());
        b[8..16].copy_from_slice(&self.key.to_le_bytes());
        b[16..24].copy_from_slice(&self.len.to_le_bytes());
        b
    }

    /// The inverse of [`RemoteRegion::to_bytes`] (`None` unless exactly 24 bytes).
    pub fn from_bytes(b: &[u8]) -> Option<Self> {
        let b: &[u8; 24] = b.try_into().ok()?;
        let word = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
        Some(RemoteRegion {
            base: word(0),
            key: word(8),
            len: word(16),
        })
    }
}

const NO_RMA: &str = "native RMA (the provider lacks FI_RMA, or rma was off at open)";

impl OfiTransport {
    /// Whether the provider granted native RMA.
    pub fn rma_supported(&self) -> bool {
        self.ep.granted().rma
    }

    /// Step 1: allocates and registers a region of `len` bytes.
    pub fn register(&mut self, len: usize) -> Result<RegionId, TransportError> {
        if !self.rma_supported() {
            return Err(TransportError::Unsupported(NO_RMA));
        }
        let region = self.ep.region(len).map_err(|f| {
            ofi_error(
                format!("registering {len} B for RMA"),
                f,
                "check the memory-lock limit (ulimit -l) and the provider's MR limits",
            )
        })?;
        self.regions.push(Some(Arc::new(region)));
        Ok(RegionId(self.regions.len() - 1))
    }

    fn region(&self, id: RegionId) -> Result<&Arc<super::ffi::Region>, TransportError> {
        self.regions
            .get(id.0)
            .and_then(Option::as_ref)
            .ok_or_else(|| TransportError::Config(format!("ofi region {} is not registered", id.0)))
    }

    /// What a peer needs to reach region `id`.
    pub fn remote(&self, id: RegionId) -> Result<RemoteRegion, TransportError> {
        let r = self.region(id)?;
        Ok(RemoteRegion {
            base: r.base,
            key: r.key,
            len: r.len() as u64,
        })
    }

    /// Copies bytes of region `id` from `off` into `out`.
    pub fn region_read(
        &self,
        id: RegionId,
        off: usize,
        out: &mut [u8],
    ) -> Result<(), TransportError> {
        let r = self.region(id)?;
        if !r.read_at(off, out) {
            return Err(out_of_range(off, out.len(), r.len()));
        }
        Ok(())
    }

    /// Copies `data` into region `id` at `off`.
    pub fn region_write(
        &mut self,
        id: RegionId,
        off: usize,
        data: &[u8],
    ) -> Result<(), TransportError> {
        let r = self.region(id)?;
        if !r.write_at(off, data) {
            return Err(out_of_range(off, data.len(), r.len()));
        }
        Ok(())
    }

    /// Step 3: forgets region `id` (freed when no operation uses it any more).
    pub fn deregister(&mut self, id: RegionId) -> Result<(), TransportError> {
        self.region(id)?;
        self.regions[id.0] = None;
        Ok(())
    }

    /// Step 2: writes `len` bytes of region `id` at `off` to `to` at `to_off` on `dest`.
    pub fn put(
        &mut self,
        dest: usize,
        id: RegionId,
        off: usize,
        len: usize,
        to: &RemoteRegion,
        to_off: u64,
    ) -> Result<SendStatus, TransportError> {
        self.rma(true, dest, id, off, len, to, to_off)
    }

    /// Step 2: reads `len` bytes from `from` at `from_off` on `dest` into region `id`
    /// at `off`.
    pub fn get(
        &mut self,
        dest: usize,
        id: RegionId,
        off: usize,
        len: usize,
        from: &RemoteRegion,
        from_off: u64,
    ) -> Result<SendStatus, TransportError> {
        self.rma(false, dest, id, off, len, from, from_off)
    }

    /// RMA operations issued and not yet completed.
    pub fn rma_in_flight(&self) -> usize {
        self.rma_in_flight
    }

    #[allow(clippy::too_many_arguments)]
    fn rma(
        &mut self,
        write: bool,
        dest: usize,
        id: RegionId,
        off: usize,
        len: usize,
        remote: &RemoteRegion,
        remote_off: u64,
    ) -> Result<SendStatus, TransportError> {
        if !self.rma_supported() {
            return Err(TransportError::Unsupported(NO_RMA));
        }
        self.reachable(dest)?;
        let region = Arc::clone(self.region(id)?);
        if off > region.len() || len > region.len() - off {
            return Err(out_of_range(off, len, region.len()));
        }
        if remote_off > remote.len || len as u64 > remote.len - remote_off {
            return Err(TransportError::Config(format!(
                "ofi RMA of {len} B at offset {remote_off} of rank {dest}'s {} B region is out \
                 of range",
                remote.len
            )));
        }
        if self.ep.busy() == self.cfg.queue_limit {
            self.progress()?;
        }
        let raddr = remote.base + remote_off;
        let issued = self
            .ep
            .rma(write, dest, &region, off, len, raddr, remote.key)
            .map_err(|f| {
                let dir = if write { "writing" } else { "reading" };
                ofi_error(
                    format!(
                        "{dir} {len} B of rank {dest}'s region (key {:#x})",
                        remote.key
                    ),
                    f,
                    "check that the region is still registered on that rank",
                )
            })?;
        match issued {
            Sent::Posted(slot) => {
                self.slot_op[slot as usize] = Op::Rma(dest);
                self.slot_since[slot as usize] = std::time::Instant::now();
                self.rma_in_flight += 1;
                Ok(SendStatus::Sent)
            }
            Sent::Injected => Ok(SendStatus::Sent),
            Sent::Busy => {
                self.stats.no_credit += 1;
                self.progress()?;
                Ok(SendStatus::NoCredit)
            }
        }
    }
}

fn out_of_range(off: usize, len: usize, size: usize) -> TransportError {
    TransportError::Config(format!(
        "ofi region range {off}+{len} B is outside the region's {size} B"
    ))
}
